package disrupt

import (
	"context"
	"errors"
	"time"
)

// Clock is the runner's clock; tests inject one that advances on After so
// that minutes of waiting run in microseconds.
type Clock interface {
	Now() time.Time
	After(d time.Duration) <-chan time.Time
}

type realClock struct{}

func (realClock) Now() time.Time                         { return time.Now() }
func (realClock) After(d time.Duration) <-chan time.Time { return time.After(d) }

// errPollTimeout is what poll returns when cond never held in time.
var errPollTimeout = errors.New("timed out")

// sleep waits d on c, or until ctx ends.
func sleep(ctx context.Context, c Clock, d time.Duration) error {
	if d <= 0 {
		return ctx.Err()
	}
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-c.After(d):
		return nil
	}
}

// poll calls cond now and then every interval until it returns true or an
// error, timeout passes on c (errPollTimeout), or ctx ends (its error).
func poll(ctx context.Context, c Clock, every, timeout time.Duration, cond func(context.Context) (bool, error)) error {
	start := c.Now()
	for {
		if err := ctx.Err(); err != nil {
			return err
		}
		done, err := cond(ctx)
		if err != nil || done {
			return err
		}
		if c.Now().Sub(start) >= timeout {
			return errPollTimeout
		}
		if err := sleep(ctx, c, every); err != nil {
			return err
		}
	}
}
