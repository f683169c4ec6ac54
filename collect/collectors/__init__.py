"""Built-in collectors: what ``collect run`` executes for a plan's ``experiment.collector``."""
