"""What plugins declare: patterns, parameters, quantities, slots, blocks, conventions, reader
declarations and the shared symbols their formulas use (frozen values, no behaviour)."""
