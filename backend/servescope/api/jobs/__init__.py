"""Work off the event loop: the job pool and its worker processes (memory budget, deadline), and
sweeps driven through Ray in a process of their own. Imports the wire."""
