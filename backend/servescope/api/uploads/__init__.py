"""Uploaded traces: the content-addressed store, receiving a multipart upload within its limits,
and turning a stored trace into a workload. Imports nothing from the other wings."""
