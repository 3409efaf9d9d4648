"""Public market data read from the engine (whitebit-exchange/docs, openapi/public/http-v4.yaml):
markets, assets, ticker, order book and depth, recent trades. A ticker's last price is the
market's last trade."""

from __future__ import annotations

from decimal import ROUND_DOWN, ROUND_UP, Decimal
from typing import Any

from ._engine import Exchange
from ._markets import ASSETS
from ._numbers import ZERO, divide_down, exact, plain, step

__all__ = ["assets", "depth", "markets", "orderbook", "ticker", "trades"]


def markets(exchange: Exchange) -> list[dict[str, object]]:
    return [market.answer() for market in exchange.markets.values()]


def assets(exchange: Exchange) -> dict[str, Any]:
    answer: dict[str, Any] = {}
    for ticker, asset in ASSETS.items():
        answer[ticker] = {
            "name": asset.name, "unified_cryptoasset_id": asset.cmc_id, "can_withdraw": True,
            "can_deposit": True, "min_withdraw": "0", "max_withdraw": "0", "maker_fee": "0.08",
            "taker_fee": "0.1", "min_deposit": "0", "max_deposit": "0",
            "currency_precision": asset.precision, "is_memo": False,
            "memo": {"deposit": False, "withdraw": False},
            "networks": {"deposits": [ticker], "withdraws": [ticker], "default": ticker},
            "limits": {"deposit": {ticker: {"min": "0"}}, "withdraw": {ticker: {"min": "0"}}},
            "confirmations": {ticker: 2},
        }
    return answer


@exact
def ticker(exchange: Exchange) -> dict[str, Any]:
    answer: dict[str, Any] = {}
    for name, market in exchange.markets.items():
        day = exchange.day(name)
        last = exchange.last_price[name]
        opening = day[0].price if day else last
        change = divide_down((last - opening) * 100, opening, 2) if opening else ZERO
        answer[name] = {
            "base_id": ASSETS[market.stock].cmc_id, "quote_id": ASSETS[market.money].cmc_id,
            "last_price": plain(last),
            "quote_volume": plain(sum((t.money for t in day), ZERO)),
            "base_volume": plain(sum((t.amount for t in day), ZERO)),
            "isFrozen": False, "change": plain(change),
        }
    return answer


@exact
def orderbook(exchange: Exchange, name: str, limit: int, level: int) -> dict[str, Any]:
    """The book's levels, best first, ``limit`` a side (0: 100); ``level`` 1..10 groups prices
    into steps ``level`` decimal places coarser (bids down, asks up)."""
    book = exchange.books[name]
    limit = limit or 100
    prec = max(book.market.money_prec - min(max(level, 0), 10), -8)

    def side(which: str) -> list[list[str]]:
        rounding = ROUND_DOWN if which == "buy" else ROUND_UP
        grouped: dict[Decimal, Decimal] = {}
        for price, amount in book.depth(which):
            key = price.quantize(step(prec), rounding=rounding) if level else price
            if key not in grouped and len(grouped) == limit:
                break
            grouped[key] = grouped.get(key, ZERO) + amount
        return [[plain(price), plain(amount)] for price, amount in grouped.items()]

    return {"ticker_id": name, "timestamp": int(exchange.now), "asks": side("sell"),
            "bids": side("buy")}


@exact
def depth(exchange: Exchange, name: str) -> dict[str, Any]:
    """The levels within 2 % of the last price."""
    last = exchange.last_price[name]
    low, high = last * Decimal("0.98"), last * Decimal("1.02")
    book = exchange.books[name]
    return {
        "ticker_id": name, "timestamp": int(exchange.now),
        "asks": [[plain(p), plain(a)] for p, a in book.depth("sell") if p <= high][:100],
        "bids": [[plain(p), plain(a)] for p, a in book.depth("buy") if p >= low][:100],
    }


def trades(exchange: Exchange, name: str, side: str | None) -> list[dict[str, Any]]:
    return [{"tradeID": t.id, "price": plain(t.price), "quote_volume": plain(t.amount),
             "base_volume": plain(t.money), "trade_timestamp": int(t.time), "type": t.side,
             "rpi": False}
            for t in exchange.trades[name] if side is None or t.side == side]
