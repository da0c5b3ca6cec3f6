"""Fail early, with the fix, when flopsreg is not installed in editable mode."""

try:
    import flopsreg.patterns  # noqa: F401
except ModuleNotFoundError as exc:  # pragma: no cover - only on a fresh clone
    raise SystemExit(f"flopsreg is not installed ({exc}); run: pip install -e '.[test]'") from exc
