"""Bundled model files of published models: ``flopsreg eval NAME`` finds them by file stem."""
