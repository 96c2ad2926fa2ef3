"""The rule engine (sans I/O): mapping files -> validated rules -> compiled matchers;
the forward (mask) and reverse (restore) engines, a request's session, fakes."""
