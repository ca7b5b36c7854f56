print("sluice")
