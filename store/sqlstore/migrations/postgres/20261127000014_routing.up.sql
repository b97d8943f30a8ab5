-- SMPP connectors (an SMSC account each) and the routes that send SMS
-- through them; the settings of each are one JSON document.
CREATE TABLE smpp_connectors (
	name       TEXT PRIMARY KEY NOT NULL,
	settings   jsonb NOT NULL,
	created_at timestamptz NOT NULL,
	updated_at timestamptz NOT NULL
);

CREATE TABLE routes (
	id bigserial PRIMARY KEY,
	position   INTEGER NOT NULL,
	settings   jsonb NOT NULL,
	created_at timestamptz NOT NULL,
	updated_at timestamptz NOT NULL
);
