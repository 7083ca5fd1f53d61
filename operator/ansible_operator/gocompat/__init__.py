"""Go behaviour reproduced bit for bit, each in exactly one place: durations, strcase, strconv.
Imports nothing else of the package."""
