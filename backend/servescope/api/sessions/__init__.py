"""Sessions: a workload and config built into tracks, each simulating ahead into its run store;
playback (play, step, seek), the viewers that watch, who may drive, and the registry of sessions.
Imports the wings below."""
