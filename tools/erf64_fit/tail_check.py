import mpmath as mp, sys
mp.mp.dps=40
P=[0.29999999999822546,0.08813100694883705,-0.4154591927821225,-0.6145411668271131,-0.4561436724665222,-0.22045772720502813,-0.07464612511300842,-0.01798240081739149,-0.0030067755551375203,-0.00032113575001700787,-1.7115408468946876e-05]
Q=[1.0,2.440685635765511,2.9442836394699836,2.2757137780804837,1.2383921217397855,0.4941169105981157,0.14638023442795015,0.03188127275749141,0.0049153989399225015,0.0004897207363974157,2.4450583527098804e-05]
u=mp.mpf(2)**-53
for line in open(sys.argv[1]):
    a,t,w,wl,fh,fl,p,q = eval(line.strip().rstrip(','))
    a=mp.mpf(a)
    E=mp.exp(-a*a); Ek=(mp.mpf(w)+mp.mpf(wl))*mp.mpf(2)**t
    F=mp.erfc(a)*mp.exp(a*a); Fk=mp.mpf(fh)+mp.mpf(fl)
    pe=sum(mp.mpf(c)*a**i for i,c in enumerate(P)); qe=sum(mp.mpf(c)*a**i for i,c in enumerate(Q))
    D=(mp.sqrt(mp.pi)*a+mp.mpf(0.7))*qe+pe
    Fr=qe/D
    m = mp.mpf(w)*mp.mpf(fh) + mp.mpf(w)*mp.mpf(fl) + mp.mpf(wl)*mp.mpf(fh)
    print(mp.nstr(a,6), 'E', mp.nstr((Ek/E-1)/u,3), 'F', mp.nstr((Fk/F-1)/u,3), 'Frat', mp.nstr((Fr/F-1)/u,3), 'p abs/D', mp.nstr((mp.mpf(p)-pe)/D/u,3), 'q', mp.nstr((mp.mpf(q)/qe-1)/u,3), 'EF', mp.nstr((Ek*Fk/(E*F)-1)/u, 3), 'erfc/ulp', mp.nstr(mp.erfc(a)/ (2**mp.floor(mp.log(mp.erfc(a),2)))/2, 3))
