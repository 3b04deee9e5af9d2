"""Test utilities and the scripts tests run as subprocesses."""
