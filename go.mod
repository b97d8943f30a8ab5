module github.com/heraldhq/herald

go 1.26
