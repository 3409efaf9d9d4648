"""A simulated exchange for the sandbox: markets of its assets with the documented constraints, a
matching engine with price-time priority, balances that add up to the last decimal, collateral
positions, and public market data, all from one state.

It is independent of the client: it never imports the client's operation tables or models, so
what it answers is a check of the client, not an echo of it.
"""

from ._book import Order
from ._engine import MAKERS, Exchange, Trade
from ._markets import ASSETS, MARKETS, Asset, Market
from ._routes import ExchangeSimulation

__all__ = ["ASSETS", "MAKERS", "MARKETS", "Asset", "Exchange", "ExchangeSimulation", "Market",
           "Order", "Trade"]
