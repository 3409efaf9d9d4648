"""Typed answers of the API: msgspec structs with snake_case fields renamed to the wire names."""

from __future__ import annotations

import enum
from collections.abc import Mapping
from decimal import Decimal
from typing import TYPE_CHECKING, Any, ClassVar, Literal, TypeAlias

import msgspec

__all__ = [
    "CollateralOrder",
    "FixedPlan",
    "Hashrate",
    "HashratePoint",
    "IntervalLiteral",
    "Investment",
    "InvestmentStatus",
    "InvestmentsPage",
    "MiningAccount",
    "MiningReward",
    "OAuthToken",
    "OrderStatus",
    "OtoOrder",
    "PayoutDestination",
    "PlanStatus",
    "PositionSide",
    "PositionSideLiteral",
    "RewardStatus",
    "RewardsPage",
    "Side",
    "SideLiteral",
    "StpLiteral",
]


class InvestmentStatus(enum.IntEnum):
    """Status of a fixed-lending investment."""

    ACTIVE = 1
    CLOSED = 2


class PlanStatus(enum.IntEnum):
    """Status of a fixed-lending plan."""

    ACTIVE = 1
    NO_COINS_LEFT = 2
    INACTIVE = 3
    PAUSE = 4


class OrderStatus(enum.StrEnum):
    """Status of an order.

    Over REST the service answers ``FILLED``, ``PARTIALLY_FILLED`` and ``CANCELED`` (one L); ``NEW``
    is the WebSocket API's (whitebit-exchange/docs, ``openapi/private/http-trade-v4.yaml``, schema
    ``ActiveOrderStatus``) and the API's first specification's. ``CANCELLED`` is the same member as
    ``CANCELED``, and both wire spellings read as it.
    """

    NEW = "NEW"
    FILLED = "FILLED"
    PARTIALLY_FILLED = "PARTIALLY_FILLED"
    CANCELED = "CANCELED"
    CANCELLED = "CANCELED"  # the first specification's spelling: an alias of the same member

    @classmethod
    def _missing_(cls, value: object) -> OrderStatus | None:
        # The first specification's "CANCELLED" on the wire: the value of no member, the
        # meaning of one.
        return cls.CANCELED if value == "CANCELLED" else None


class RewardStatus(enum.StrEnum):
    """Status of a mining reward (whitebit-exchange/docs, openapi/private/main_api_v4.yaml,
    schema ``MiningReward``): ``PENDING`` is not final yet (waiting for confirmations or for its
    payout transaction) and changes later; ``SUCCESSFUL`` and ``CANCELED`` are final."""

    PENDING = "pending"
    SUCCESSFUL = "successful"
    CANCELED = "canceled"


class PayoutDestination(enum.StrEnum):
    """Where a mining reward is paid: the main balance, or an external address."""

    MAIN_BALANCE = "main_balance"
    EXTERNAL_ADDRESS = "external_address"


class Side(enum.StrEnum):
    """Side of an order."""

    BUY = "buy"
    SELL = "sell"


class PositionSide(enum.StrEnum):
    """Position side of a collateral order."""

    LONG = "LONG"
    SHORT = "SHORT"
    BOTH = "BOTH"


# The same values as plain strings, for signatures that accept ``side="buy"`` as well as
# ``Side.BUY`` while a type checker still rejects ``side="buyy"``.

#: ``side`` of an order as a string: ``"buy"`` or ``"sell"`` (the values of
#: [`Side`][txc_async.Side]).
SideLiteral: TypeAlias = Literal["buy", "sell"]
#: ``position_side`` of a collateral order as a string (the values of
#: [`PositionSide`][txc_async.PositionSide]).
PositionSideLiteral: TypeAlias = Literal["LONG", "SHORT", "BOTH"]
#: The step of a hashrate series: five minutes, one hour or one day.
IntervalLiteral: TypeAlias = Literal["5m", "1h", "24h"]
#: Self-trade prevention of an order: ``"no"`` (self-trades allowed), ``"cb"`` (cancel both),
#: ``"cn"`` (cancel the new order), ``"co"`` (cancel the existing order).
StpLiteral: TypeAlias = Literal["no", "cb", "cn", "co"]


# Values an enum does not list decode as the plain wire value, so a status the exchange adds later
# never turns a success into an error. msgspec decodes the listed values itself (the fast path);
# the tolerant reading in ``_answers.results`` builds the struct with the raw value otherwise. The
# runtime annotations name the enums so that msgspec can decode them; type checkers see the
# unions.
if TYPE_CHECKING:
    _InvestmentStatusValue: TypeAlias = InvestmentStatus | int
    _PlanStatusValue: TypeAlias = PlanStatus | int
    _OrderStatusValue: TypeAlias = OrderStatus | str
    _SideValue: TypeAlias = Side | str
    _PositionSideValue: TypeAlias = PositionSide | str
    _RewardStatusValue: TypeAlias = RewardStatus | str
    _PayoutDestinationValue: TypeAlias = PayoutDestination | str
else:
    _InvestmentStatusValue = InvestmentStatus
    _PlanStatusValue = PlanStatus
    _OrderStatusValue = OrderStatus
    _SideValue = Side
    _PositionSideValue = PositionSide
    _RewardStatusValue = RewardStatus
    _PayoutDestinationValue = PayoutDestination

# Decimal fields are ``Decimal | None``: ``""``, ``null`` or a missing value decodes as None.


class FixedPlan(msgspec.Struct, frozen=True, rename="camel", gc=False):
    """A fixed crypto-lending plan."""

    id: str
    ticker: str
    status: _PlanStatusValue
    percent: Decimal | None
    duration: int
    interest_ticker: str
    interest_ratio: Decimal | None
    min_investment: Decimal | None
    max_investment: Decimal | None
    max_possible_investment: Decimal | None


class Investment(msgspec.Struct, frozen=True, rename="camel", gc=False):
    """One fixed-lending investment of the user."""

    id: str
    plan: FixedPlan
    status: _InvestmentStatusValue
    created: int
    updated: int
    payment_time: int
    amount: Decimal | None
    interest_paid: Decimal | None


class InvestmentsPage(msgspec.Struct, frozen=True):
    """One page of the investments history."""

    offset: int
    limit: int
    records: list[Investment]

    def __bool__(self) -> bool:
        """True when the page holds records."""
        return bool(self.records)


class OtoOrder(msgspec.Struct, frozen=True, rename="camel", gc=False):
    """The stop-loss / take-profit legs attached to an order."""

    oto_id: int
    stop_loss: Decimal | None = None
    take_profit: Decimal | None = None


class CollateralOrder(
    msgspec.Struct,
    frozen=True,
    rename={
        "order_id": "orderId", "client_order_id": "clientOrderId", "deal_money": "dealMoney",
        "deal_stock": "dealStock", "deal_fee": "dealFee", "position_side": "positionSide",
        "reduce_only": "reduceOnly",
    },
):
    """A collateral stop-limit order as the exchange recorded it.

    The service writes ``orderId``, ``clientOrderId``, ``dealMoney``, ``dealStock`` and
    ``dealFee`` (whitebit-exchange/docs, ``openapi/private/http-trade-v4.yaml``, corrected in
    that repository's commit 9116e40: "the server has always used camelCase"); the API's first
    specification writes them in snake_case. Each field reads in whichever spelling it comes,
    one answer may mix them, and a field in both reads when they agree or one is empty or null.
    """

    #: The second spelling of each field that has one (the first specification's), read where
    #: the first is missing, empty or null. Both spellings of one field with two different
    #: values make the answer unreadable.
    wire_aliases: ClassVar[Mapping[str, str]] = {
        "orderId": "order_id", "clientOrderId": "client_order_id", "dealMoney": "deal_money",
        "dealStock": "deal_stock", "dealFee": "deal_fee",
    }

    order_id: int
    market: str
    side: _SideValue
    type: str
    timestamp: float
    amount: Decimal | None
    price: Decimal | None
    activation_price: Decimal | None
    status: _OrderStatusValue
    client_order_id: str = ""
    deal_money: Decimal | None = None
    deal_stock: Decimal | None = None
    left: Decimal | None = None
    deal_fee: Decimal | None = None
    stp: str | None = None
    oto: OtoOrder | None = None
    position_side: _PositionSideValue | None = None
    reduce_only: bool | None = None


class MiningAccount(msgspec.Struct, frozen=True, rename="camel"):
    """A mining-pool account."""

    name: str
    created_at: int


class MiningReward(msgspec.Struct, frozen=True, rename="camel", gc=False):
    """One daily reward of a mining-pool account.

    The live service also writes ``status``, ``rewardCurrency``, ``payoutDestination`` and, for a
    payout to an external address, ``payoutTransactionHash``, ``payoutAddress`` and
    ``payoutTime`` (null for a main-balance payout) (whitebit-exchange/docs,
    ``openapi/private/main_api_v4.yaml``, schema ``MiningReward``); a pending reward's status and
    payout fields change after it was first read. Records in the shape of the API's first
    specification have none of them: they read as None.
    """

    mining_account_name: str
    total_reward: Decimal | None
    reward: Decimal | None
    fee: Decimal | None
    fpps_rate: Decimal | None
    hash_rate: str
    date: int
    status: _RewardStatusValue | None = None
    reward_currency: str | None = None
    payout_destination: _PayoutDestinationValue | None = None
    payout_transaction_hash: str | None = None
    payout_address: str | None = None
    payout_time: int | None = None


class RewardsPage(msgspec.Struct, frozen=True):
    """One page of mining rewards, newest first."""

    offset: int
    limit: int
    data: list[MiningReward]

    def __bool__(self) -> bool:
        """True when the page holds records."""
        return bool(self.data)


class HashratePoint(msgspec.Struct, frozen=True, gc=False, rename="camel"):
    """The hashrate of an account at one time; ``reject_rate`` is the share of rejected work
    (``Decimal("0.01")`` is 1 %), when the service reports it."""

    timestamp: int
    hashrate: str
    reject_rate: Decimal | None = None


class Hashrate(msgspec.Struct, frozen=True):
    """The hashrate series of a mining account."""

    account: str
    hashrate: list[HashratePoint]


class OAuthToken(msgspec.Struct, frozen=True, repr_omit_defaults=False):
    """A new OAuth access token and the refresh token that replaces the one used.

    ``expires_in`` is in seconds. RFC 6749 (section 5.1) makes ``scope`` optional (absent when
    it is the scope asked for) and ``expires_in`` only recommended: what the answer does not
    state, or states in a form that cannot be read, is None, and never costs the new refresh
    token (the server stopped honouring the old one when it answered). The tokens never appear
    in ``repr`` or ``str``.
    """

    access_token: str
    expires_in: int | None
    refresh_token: str
    scope: str | None
    token_type: str | None

    @property
    def scopes(self) -> list[str]:
        """The granted scope names (none when the answer does not list them)."""
        return [s.strip() for s in (self.scope or "").split(",") if s.strip()]

    def __rich_repr__(self) -> list[tuple[str, Any]]:
        """The fields as shown, the tokens masked: what rich's pretty printer, log handler and
        tracebacks read, and what ``repr`` writes."""
        return [
            ("access_token", "***"), ("expires_in", self.expires_in), ("refresh_token", "***"),
            ("scope", self.scope), ("token_type", self.token_type),
        ]

    def __repr__(self) -> str:
        shown = ", ".join(f"{name}={value!r}" for name, value in self.__rich_repr__())
        return f"OAuthToken({shown})"

    __str__ = __repr__


# Envelopes of the wire answers; the client unwraps them.


class _MiningAccountEnvelope(msgspec.Struct, frozen=True):
    data: MiningAccount


class _HashrateEnvelope(msgspec.Struct, frozen=True):
    # None: the empty data of an account the service has disabled (null, [], {} or no data).
    data: Hashrate | None = None


class _OAuthAnswer(msgspec.Struct, frozen=True):
    # The two tokens, and the rest as it comes: nothing but a missing token makes the answer
    # unreadable (see OAuthToken).
    access_token: str
    refresh_token: str
    expires_in: Any = None
    scope: Any = None
    token_type: Any = None

    def token(self) -> OAuthToken:
        return OAuthToken(
            access_token=self.access_token, expires_in=_seconds(self.expires_in),
            refresh_token=self.refresh_token, scope=_text(self.scope),
            token_type=_text(self.token_type),
        )


def _seconds(value: object) -> int | None:
    """A lifetime in seconds: an integer, written as one or as a string of digits; else None."""
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value
    if isinstance(value, str) and value.isascii() and value.isdigit() and len(value) <= 18:
        return int(value)
    if isinstance(value, float) and value.is_integer() and abs(value) < 1e18:
        return int(value)
    if (
        isinstance(value, Decimal) and value.is_finite() and value.adjusted() < 18
        and value == value.to_integral_value()
    ):
        return int(value)
    return None


def _text(value: object) -> str | None:
    return value if isinstance(value, str) else None


class _OAuthEnvelope(msgspec.Struct, frozen=True):
    data: _OAuthAnswer


class _Balance(msgspec.Struct, frozen=True, gc=False):
    # Unset: the asset's entry has no main_balance at all (not the shape of a balance).
    main_balance: Decimal | msgspec.UnsetType | None = msgspec.UNSET


class _FlatBalance(_Balance, frozen=True, gc=False):
    """The balance of one ticker, as the service answers it: ``{"main_balance": "0.5"}``."""
