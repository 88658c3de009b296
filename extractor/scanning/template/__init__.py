# Template: a raise's message expression -> its message template, placeholders and regex pattern.
