"""Option values and run settings: the options table, parsed values, splits, settings, the container environment, env files, upstream's TOML.

May import: engine (engine specs only), store.
Bad input is one error naming the option, file or field. No pytest: the plugin registers and reads the options with it.
"""
