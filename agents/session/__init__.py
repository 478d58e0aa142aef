"""A locally run session's environment and its setup snapshot: key, scope, sharing."""
