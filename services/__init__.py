"""The three services and the code they share."""

# The package version, as pyproject.toml's [project] version says (a unit test keeps the two
# equal): the images install the dependencies but not this package, so the services read it here.
__version__ = "0.1.0"
