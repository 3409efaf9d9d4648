"""Time on the server's clock: the estimate of the server's clock from its answers (``clock``)
and the nonces drawn on it, one counter per API key (``nonces``)."""
