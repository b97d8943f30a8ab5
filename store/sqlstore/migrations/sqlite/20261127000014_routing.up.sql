-- SMPP connectors (an SMSC account each) and the routes that send SMS
-- through them; the settings of each are one JSON document.
CREATE TABLE smpp_connectors (
	name       TEXT PRIMARY KEY NOT NULL,
	settings   TEXT NOT NULL,
	created_at INTEGER NOT NULL,
	updated_at INTEGER NOT NULL
);

CREATE TABLE routes (
	id INTEGER PRIMARY KEY AUTOINCREMENT,
	position   INTEGER NOT NULL,
	settings   TEXT NOT NULL,
	created_at INTEGER NOT NULL,
	updated_at INTEGER NOT NULL
);
