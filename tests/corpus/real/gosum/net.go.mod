module golang.org/x/net

go 1.17

require (
	golang.org/x/sys v0.5.0
	golang.org/x/term v0.5.0
	golang.org/x/text v0.7.0
)
