module golang.org/x/tools

go 1.18 // tagx:compat 1.16

require (
	github.com/yuin/goldmark v1.4.13
	golang.org/x/mod v0.7.0
	golang.org/x/net v0.5.0
	golang.org/x/sys v0.4.0
)

require golang.org/x/sync v0.1.0
