"""Power logs other tools wrote (nvidia-smi, dcgmi dmon, Zeus, CodeCarbon), converted to telemetry traces.
One small module per tool behind one function, ``convert(text, source, options) -> Trace``.
"""
