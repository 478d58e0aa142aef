"""The delivery path: claim a delivery, plan its spawns, mint, dispatch, record."""
