"""Write the example tables: ``python examples/make_examples.py`` (from the repository root).

* ``transactions.csv``: 2,000 card transactions (id, timestamp, merchant, its
  category, channel, amount, quantity, customer age, account balance,
  country; 2% missing cells in four columns) with 12 planted errors of seven
  kinds: an impossible age, an amount 30x the merchant's usual, a quantity
  40x, an age that does not go with the balance, a merchant never seen, an
  amount 8x the merchant's usual, a category that is not the merchant's.
* ``transactions_truth.csv``: the planted rows (0-based position among the
  data rows), their kind and the columns that cause them (separated by ";").
* ``normal.csv``: 2,000 transactions of the same kind without errors (to
  ``nrad fit`` on, then ``nrad score`` the first table).
"""

from __future__ import annotations

from pathlib import Path

from nrad.synthetic import make_transactions

HERE = Path(__file__).parent


def main() -> None:
    planted = make_transactions(2000, 12, random_state=2024)
    planted.frame.to_csv(HERE / "transactions.csv", index=False)
    truth = planted.truth.assign(causes=planted.truth["causes"].map(";".join))
    truth.to_csv(HERE / "transactions_truth.csv", index=False)
    make_transactions(2000, 0, random_state=2025).frame.to_csv(HERE / "normal.csv", index=False)


if __name__ == "__main__":
    main()
