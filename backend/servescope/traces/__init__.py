"""Real traffic in: one adapter per trace format, each yielding RequestSpecs or StepRecords, and
a registry that detects the format (with an override) and applies the shared load options."""
