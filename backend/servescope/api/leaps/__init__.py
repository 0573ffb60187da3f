"""Leaps: a scout process runs a long run ahead without records and checkpoints it; a seek past the
stored records resumes from the nearest checkpoint and writes records there. Imports records, jobs
and the wire."""
