"""The request pipeline: ``pipeline`` runs every call of a client, with ``admission`` (the
server's first answer, the budgets, the nonce, a connection), ``requests`` (URLs, signing,
headers), ``recording`` (a DEBUG line and the ``on_request`` hook for every exchange) and
``calls`` (the calls in flight, which ``close()`` ends)."""

from .pipeline import Pipeline
from .recording import RequestRecord
from .requests import default_user_agent

__all__ = ["Pipeline", "RequestRecord", "default_user_agent"]
