"""Recording a sensor: polling at a requested interval, keeping every poll and the phase marks.
Also ``collect probe``, which measures what a meter can resolve before a margin is frozen.
"""
