-- A weight and a budget's limit bounded in the tables as the commands bound them (0025 let
-- more through): a weight below 1e-6 made a claim's pass advance (n / weight) past the largest
-- float, and every claim of its stage failed, every tenant's; a limit of NaN passed
-- "budget_limit >= 0" (NaN sorts above every number) and never stopped its tenant. Written by
-- hand in SQL, either now fails at once.
ALTER TABLE pipeline.tenant_weights
    DROP CONSTRAINT tenant_weights_weight_check,
    ADD CONSTRAINT tenant_weights_weight_check CHECK (weight >= 0.000001 AND weight <= 1000000);
ALTER TABLE pipeline.budgets
    DROP CONSTRAINT budgets_limit_check,
    ADD CONSTRAINT budgets_limit_check CHECK (budget_limit >= 0 AND budget_limit < 'Infinity');
