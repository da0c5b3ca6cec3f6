"""Plugin loading: the hook specifications, the loader (pluggy), the load-time checks, and the
helpers plugin authors test their patterns with."""
