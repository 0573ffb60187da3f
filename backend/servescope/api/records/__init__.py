"""A run's records on disk: the SQLite run store, the writer that packs steps and decode stretches
into it with keyframes, and the sources that feed a track. Imports the wire."""
