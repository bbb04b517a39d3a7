"""What the tests share: helpers, loopback servers, child-process scripts and data files.

`tests` is on pytest's `pythonpath`, so a test in any folder imports these as
`support.<module>`; a test never imports another test.
"""
