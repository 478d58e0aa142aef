"""The admin API's routes and the models of their answers."""
