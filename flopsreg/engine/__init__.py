"""The engine: selection, composition, evaluation, sweeps, serving, comparisons, parameter counts,
utilisation, memory in bytes and the on-disk cache of compositions: functions over Model values."""
