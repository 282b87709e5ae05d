#!/usr/bin/env bash
# Creates the sqlite pack's fixture, shop.db, in DIR (created if missing; an old shop.db is replaced).
# The eval cases expect these rows; `scratch` is the table the proof script drops.
set -euo pipefail
dir="${1:?usage: fixture.sh DIR}"
mkdir -p "$dir"
rm -f "$dir/shop.db"
sqlite3 "$dir/shop.db" <<'SQL'
CREATE TABLE products (id INTEGER PRIMARY KEY, name TEXT NOT NULL UNIQUE, price_cents INTEGER NOT NULL);
CREATE TABLE orders (id INTEGER PRIMARY KEY, product_id INTEGER NOT NULL REFERENCES products(id),
                     qty INTEGER NOT NULL, placed_on TEXT NOT NULL);
CREATE INDEX idx_orders_product ON orders(product_id);
CREATE VIEW order_totals AS
  SELECT p.name, sum(o.qty) AS qty, sum(o.qty * p.price_cents) AS total_cents
  FROM orders o JOIN products p ON p.id = o.product_id GROUP BY p.name;
CREATE TABLE scratch (note TEXT);
INSERT INTO products (name, price_cents) VALUES ('anvil', 4950), ('bucket', 325), ('crate', 1200);
INSERT INTO orders (product_id, qty, placed_on) VALUES
  (1, 1, '2024-03-01'), (2, 4, '2024-03-02'), (2, 2, '2024-03-05'), (3, 1, '2024-03-07');
INSERT INTO scratch VALUES ('safe to drop');
SQL
