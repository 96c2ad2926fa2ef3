"""What every API is built from (sans I/O): wire specs, the field model and its walk,
masking and restoring, the stream and channel base classes, hold-back windows, realtime
connections. Names no API's words."""
