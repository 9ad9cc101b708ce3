"""The trusted evaluator. Imports nothing else from the package, so an agent's code never reaches the judge."""
