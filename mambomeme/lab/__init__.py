"""The lab: the benchmark protocol, scoring, calibration, no-match fitting and the bench commands.
The product (every other module of mambomeme) never imports it; the command line does."""
