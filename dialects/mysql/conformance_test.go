package mysql_test

import (
	"testing"

	"github.com/fencedsql/fencedsql/internal/fencetest"
)

func TestConformance(t *testing.T) { fencetest.Run(t, fencetest.MySQL()) }
