print("micro")
