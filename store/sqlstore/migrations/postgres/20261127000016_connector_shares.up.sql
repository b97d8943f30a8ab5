-- Which herald processes run which SMPP connectors, by heartbeat: each
-- takes its share of a connector's rate and binds.
CREATE TABLE connector_shares (
	connector TEXT NOT NULL,
	instance  TEXT NOT NULL,
	beat_at   timestamptz NOT NULL,
	PRIMARY KEY (connector, instance)
);
