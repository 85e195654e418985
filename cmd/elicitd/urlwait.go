package main

import (
	"errors"
	"time"
)

// maxURLWait bounds --url-wait: a held request longer than the flow's own
// life (connect.DefaultFlowTTL) could never end in a finished page.
const maxURLWait = 5 * time.Minute

func init() {
	addSettings(setting{name: "url-wait", def: "30s", usage: "how long a retry that accepted a URL-mode step (connect_billing, connect_calendar, send_report) before its page was finished is held open, answered as soon as the page is finished; 0 or off answers at once; at most 5m",
		apply: func(c *config, v string) error {
			if isOff(v) || v == "0" {
				c.urlWait = 0
				return nil
			}
			d, err := time.ParseDuration(v)
			switch {
			case err != nil:
				return err
			case d < 0 || d > maxURLWait:
				return errors.New("must be between 0 and 5m")
			}
			c.urlWait = d
			return nil
		}})
}

// stepWait is connect.Step.Wait for the configured --url-wait: 0 (off)
// means no wait, which Step spells as a negative duration.
func stepWait(cfg *config) time.Duration {
	if cfg.urlWait <= 0 {
		return -1
	}
	return cfg.urlWait
}
