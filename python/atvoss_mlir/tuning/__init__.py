"""Autotuning: searched schedules per op, measured on the simulator."""
