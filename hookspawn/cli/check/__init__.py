"""`hookspawn check`: `command` (the verb) runs `report` (compile a .auto directory, print its
diagnostics and agents, with `snapshot_sharing`, its account of who shares a setup snapshot) and
the event checks: `event_checks` over `event_schemas` (githubkit's models, read as shapes from
`event_shapes` + `event_shapes.json`), `event_paths` (+ `event_paths.json`) and `agent_lines`."""
