"""The runner's sandbox configuration: its rules, the domains it may reach, its migration."""
