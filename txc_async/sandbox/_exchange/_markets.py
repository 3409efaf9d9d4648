"""The exchange's markets and assets, with the constraints ``GET /api/v4/public/markets``
documents for each market (whitebit-exchange/docs, openapi/public/http-v4.yaml): precisions,
fees in percent, minimum amount and total, maximum total."""

from __future__ import annotations

from dataclasses import dataclass
from decimal import Decimal

__all__ = ["ASSETS", "MARKETS", "Asset", "Market"]


@dataclass(frozen=True, slots=True)
class Asset:
    """An asset of the exchange: its name, CoinMarketCap id and decimal places."""

    ticker: str
    name: str
    cmc_id: int
    precision: int


@dataclass(frozen=True, slots=True)
class Market:
    """A spot market (``stock``/``money``) and the rules its orders are checked against."""

    name: str
    stock: str
    money: str
    stock_prec: int
    money_prec: int
    min_amount: Decimal
    min_total: Decimal
    max_total: Decimal
    maker_fee: Decimal  # percent, as the service writes it: "0.1" is 0.1 %
    taker_fee: Decimal
    collateral: bool
    #: The price the simulated makers quote around when the exchange opens.
    opening_price: Decimal

    @property
    def fee_prec(self) -> int:
        """Decimal places of a fee: enough to hold ``amount * price * fee`` exactly, so a fee is
        never rounded (the documents' examples are exact products: dealFee "0.041258268" of
        dealMoney "41.258268" at 0.1 %)."""
        return self.stock_prec + self.money_prec + 5

    @property
    def maker_ratio(self) -> Decimal:
        return self.maker_fee.scaleb(-2)

    @property
    def taker_ratio(self) -> Decimal:
        return self.taker_fee.scaleb(-2)

    def answer(self) -> dict[str, object]:
        """The market as ``GET /api/v4/public/markets`` lists it."""
        return {
            "name": self.name, "stock": self.stock, "money": self.money,
            "stockPrec": str(self.stock_prec), "moneyPrec": str(self.money_prec),
            "feePrec": str(self.fee_prec), "makerFee": str(self.maker_fee),
            "takerFee": str(self.taker_fee), "minAmount": str(self.min_amount),
            "minTotal": str(self.min_total), "maxTotal": str(self.max_total),
            "tradesEnabled": True, "isCollateral": self.collateral, "type": "spot",
            "isTradFiFutures": False, "delistedAt": None,
        }


ASSETS: dict[str, Asset] = {
    asset.ticker: asset for asset in (
        Asset("BTC", "Bitcoin", 1, 8),
        Asset("ETH", "Ethereum", 1027, 18),
        Asset("USDT", "Tether US", 825, 6),
        Asset("SOL", "Solana", 5426, 9),
        Asset("TXC", "TXC Token", 0, 8),
    )
}

_MAKER, _TAKER = Decimal("0.08"), Decimal("0.1")


def _market(name: str, stock_prec: int, money_prec: int, min_amount: str, min_total: str,
            collateral: bool, price: str) -> Market:
    stock, money = name.split("_")
    return Market(name, stock, money, stock_prec, money_prec, Decimal(min_amount),
                  Decimal(min_total), Decimal("10000000000"), _MAKER, _TAKER, collateral,
                  Decimal(price))


MARKETS: dict[str, Market] = {
    market.name: market for market in (
        _market("BTC_USDT", 6, 2, "0.0001", "5", True, "60000"),
        _market("ETH_USDT", 4, 2, "0.001", "5", True, "3000"),
        _market("ETH_BTC", 3, 6, "0.001", "0.0001", False, "0.05"),
        _market("SOL_USDT", 2, 3, "0.01", "5", True, "150"),
        _market("TXC_USDT", 2, 4, "1", "1", False, "1.25"),
    )
}
