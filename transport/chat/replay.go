package chat

import "time"

// ReplayHold is how long a callback's key is kept to refuse its replay.
const ReplayHold = 24 * time.Hour
