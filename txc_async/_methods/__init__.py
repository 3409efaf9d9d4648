"""The client's typed methods, one class per documentation group (``client.spot``,
``client.market``, ...): each generated from the operations' declarations by
generator/generate.py, but ``base``, what they share."""
