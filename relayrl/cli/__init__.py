"""The command line: `relayrl train | scale | serve | export | evaluate | plot | tune`."""
