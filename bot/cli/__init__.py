"""`cra-bot`, the server's command line: `main` (serve, worker, run, action, bench, register,
doctor), `bench` (`cra-bot bench`), `workers` (`cra-bot worker`: RQ workers on the runs' and
the bench's queues), `doctor` (the server's set-up checked line by line), `register` and
`manifest` (the App created through GitHub's manifest flow) and `startup` (what serve, worker
and run check before they start)."""
