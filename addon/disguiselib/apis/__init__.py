"""One package per API family (sans I/O), each built from the public names of base/ and the floors below;
`registry` lists every API and provider."""
