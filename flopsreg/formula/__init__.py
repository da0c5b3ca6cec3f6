"""Formula compilation: sympy expressions to exact-integer Python, its sympy-free runtime, and the
cached-prefix forms derived from the formulas."""
