"""Learning tools: answer `check`s with teaching sentences and the bug `gallery`.

May import anything below it: core, bugs, diagnosis, forecast.
"""
